"""Scope analysis behind the single identifier renamer (C, Java, Python).

Finds, for every name, its *occurrences* in variable position and its *declarations*
with the scope node that owns them. A name is a renamable local when it is declared in
a function and every occurrence resolves to a declaration in an enclosing scope inside
a function; names that may denote globals, fields, macros, types, imports, labels or
(for Python) parameters are blocked. Renaming all occurrences of such a name to a
fresh name is then consistent. The conditions implement the identifier-renaming rules of
NatGen (Chakraborty et al., FSE 2022), CODA (Tian et al., ASE 2023) and Rabin et al.
(IST 2021), with the pitfalls measured on real programs listed in issue 3.
"""

from __future__ import annotations

from mlflow_metacompress.transforms._scope_resolution import Analysis
from mlflow_metacompress.transforms._scopes_c import c_analyse
from mlflow_metacompress.transforms._scopes_java import java_analyse
from mlflow_metacompress.transforms._scopes_python import py_analyse
from mlflow_metacompress.transforms._tree import Source


def analyse(src: Source) -> Analysis:
    """Run the language's scope analysis over a parsed source."""
    out = Analysis()
    {"c": c_analyse, "java": java_analyse, "python": py_analyse}[src.language](src, out)
    return out
