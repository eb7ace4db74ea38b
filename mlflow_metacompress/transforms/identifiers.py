"""The identifier API: which names may be renamed, and the one renamer that renames them.

Every renaming in the project (``rename_variables``, ``rename_function`` and the
identifier-substitution attacks of issue 4) goes through :func:`rename_identifiers`, which
edits by byte ranges and refuses new names that are invalid, keywords, reserved library
names, or that collide with any identifier, macro or type in the code. Renaming rules follow
NatGen (Chakraborty et al., FSE 2022), CODA (Tian et al., ASE 2023) and Rabin et al.
(IST 2021); interface-preserving exclusions (``main``, ``@Override``/JDK interface methods,
Python parameters and keyword names) follow the pitfalls recorded in issue 3.
"""

from __future__ import annotations

import builtins
import keyword
import re

from mlflow_metacompress.transforms._edits import Edits
from mlflow_metacompress.transforms._scope_resolution import Analysis
from mlflow_metacompress.transforms._scopes import analyse
from mlflow_metacompress.transforms._scopes_c import macro_names
from mlflow_metacompress.transforms._tree import Node, Source, TransformError

_C_KEYWORDS = frozenset(
    """auto break case char const continue default do double else enum extern
float for goto if inline int long register restrict return short signed sizeof static struct switch
typedef union unsigned void volatile while _Alignas _Alignof _Atomic _Bool _Complex _Generic
_Imaginary _Noreturn _Static_assert _Thread_local asm typeof __asm__ __attribute__ __typeof__
__inline __inline__ __restrict __volatile__ __extension__ alignas alignof bool true false nullptr
static_assert thread_local constexpr typeof_unqual""".split()
)
_JAVA_KEYWORDS = frozenset(
    """abstract assert boolean break byte case catch char class const continue
default do double else enum extends final finally float for goto if implements import instanceof int
interface long native new package private protected public return short static strictfp super switch
synchronized this throw throws transient try void volatile while true false null var yield record
sealed permits non-sealed when module open exports requires _""".split()
)
_PY_KEYWORDS = frozenset(keyword.kwlist) | frozenset(keyword.softkwlist)

KEYWORDS: dict[str, frozenset[str]] = {"c": _C_KEYWORDS, "java": _JAVA_KEYWORDS, "python": _PY_KEYWORDS}
"""Reserved words per language; never valid as new names."""

RESERVED: dict[str, frozenset[str]] = {
    "c": frozenset(
        """NULL EOF errno stdin stdout stderr assert main size_t ssize_t ptrdiff_t
    offsetof va_list va_start va_end va_arg va_copy FILE exit abort malloc free printf
    uint8_t uint16_t uint32_t uint64_t int8_t int16_t int32_t int64_t uintptr_t intptr_t
    INT_MAX INT_MIN UINT_MAX LONG_MAX LONG_MIN CHAR_BIT SIZE_MAX""".split()
    ),
    "java": frozenset(
        """String Object System Math Integer Long Double Float Boolean Character Byte
    Short Number Exception RuntimeException Error Throwable Thread Runnable Class Override
    Deprecated SuppressWarnings StringBuilder StringBuffer Iterable Comparable Void Enum Record
    CharSequence Cloneable AutoCloseable Process Runtime IllegalArgumentException
    IllegalStateException NullPointerException main length""".split()
    ),
    "python": frozenset(dir(builtins)) | {"self", "cls", "main", "__class__"},
}
"""Library names that a new identifier must not shadow, per language."""

_IDENT = {
    "c": re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z"),
    "java": re.compile(r"[A-Za-z_$][A-Za-z0-9_$]*\Z"),
    "python": re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z"),
}

JDK_METHODS = frozenset(
    """toString equals hashCode compareTo compare run call get apply accept test
iterator hasNext next remove close clone finalize main length charAt subSequence size isEmpty
contains add put read write flush handle execute actionPerformed paint init start stop destroy
getName getValue setValue valueOf values ordinal""".split()
)
"""Method names that may implement JDK interfaces or override Object; never renamed."""


def is_valid_identifier(name: str, language: str) -> bool:
    """True if ``name`` is a syntactically valid, non-keyword, non-reserved identifier."""
    if language not in _IDENT:
        raise ValueError(f"unsupported language {language!r}")
    if not isinstance(name, str) or not _IDENT[language].match(name):
        return False
    if name in KEYWORDS[language] or name in RESERVED[language]:
        return False
    if language == "c" and (name.startswith("__") or re.match(r"_[A-Z]", name)):
        return False
    if language == "python" and name.startswith("__") and name.endswith("__"):
        return False
    return True


def _source(code: str | Source, language: str) -> Source:
    src = code if isinstance(code, Source) else Source(code, language)
    src.require_clean()
    return src


def get_analysis(src: Source) -> Analysis:
    """Scope analysis of ``src``, computed once per parsed sample."""
    if "analysis" not in src.cache:
        src.cache["analysis"] = analyse(src)
    return src.cache["analysis"]


def _all_identifiers(src: Source) -> set[str]:
    if "all_identifiers" not in src.cache:
        names = {src.text(n) for t, nodes in src.by_type.items() if t.endswith("identifier") for n in nodes}
        names |= macro_names(src)
        src.cache["all_identifiers"] = names
    return src.cache["all_identifiers"]


def all_identifiers(code: str, language: str) -> set[str]:
    """Every identifier, type, label, field and macro token name that occurs in ``code``."""
    return set(_all_identifiers(_source(code, language)))


def _renamable(src: Source) -> list[str]:
    a = get_analysis(src)
    return [
        n
        for n in a.order
        if a.valid.get(n) and n not in a.blocked and n not in a.params and is_valid_identifier(n, src.language)
    ]


def renamable_identifiers(code: str, language: str) -> list[str]:
    """Local variables (and, for C and Java, parameters) that may be renamed, in order of
    first occurrence. Python parameters are excluded: callers may pass them by keyword."""
    return _renamable(_source(code, language))


def _function_sites(src: Source) -> dict[str, list[Node]]:
    """Renamable function/method names mapped to every byte range that names them."""
    if "function_sites" in src.cache:
        return src.cache["function_sites"]
    if src.language == "c":  # C needs only the macro names, not the whole scope analysis
        sites = _c_function_sites(src, macro_names(src))
    else:
        sites = {"java": _java_function_sites, "python": _py_function_sites}[src.language](src, get_analysis(src))
    sites = {k: v for k, v in sites.items() if is_valid_identifier(k, src.language)}
    src.cache["function_sites"] = sites
    return sites


def _c_function_sites(src: Source, macros: set[str]) -> dict[str, list[Node]]:
    names = []
    for fn in src.nodes("function_definition"):
        decl = fn.child("declarator")
        while decl is not None and decl.type != "function_declarator":
            decl = decl.child("declarator")
        ident = decl.child("declarator") if decl is not None else None
        if ident is not None and ident.type == "identifier":
            names.append(src.text(ident))
    wanted = {n for n in names if n not in macros and n != "main"}
    by_name: dict[str, list[Node]] = {n: [] for n in dict.fromkeys(names) if n in wanted}
    for x in src.nodes("identifier"):
        text = src.text(x)
        if text in by_name:
            by_name[text].append(x)
    return by_name


def _java_function_sites(src: Source, a: Analysis) -> dict[str, list[Node]]:
    classes = {
        src.text(name)
        for c in src.nodes("class_declaration", "interface_declaration", "enum_declaration", "record_declaration")
        if (name := c.child("name")) is not None
    }
    sites: dict[str, list[Node]] = {}
    banned: set[str] = set(JDK_METHODS)
    for m in src.nodes("method_declaration"):
        name = m.child("name")
        if name is None:
            continue
        text = src.text(name)
        mods = [c for c in m.children if c.type == "modifiers"]
        if mods and "@Override" in src.text(mods[0]):
            banned.add(text)
        owner = next(
            (
                x
                for x in m.ancestors()
                if x.type
                in (
                    "class_declaration",
                    "object_creation_expression",
                    "enum_declaration",
                    "interface_declaration",
                    "record_declaration",
                )
            ),
            None,
        )
        if owner is not None and owner.type == "object_creation_expression":
            banned.add(text)
        elif owner is not None:
            supers = [c for c in owner.children if c.type in ("superclass", "super_interfaces", "extends_interfaces")]
            types = {src.text(t) for s in supers for t in s.walk() if t.type == "type_identifier"}
            if types - classes:
                banned.add(text)
        sites.setdefault(text, []).append(name)
    for call in src.nodes("method_invocation"):
        name, obj = call.child("name"), call.child("object")
        if name is None or src.text(name) not in sites:
            continue
        if (
            obj is None
            or obj.type == "this"
            or (obj.type == "identifier" and src.text(obj) in classes and src.text(obj) not in a.occurrences)
        ):
            sites[src.text(name)].append(name)
        else:
            banned.add(src.text(name))
    for ref in src.nodes("method_reference"):
        kids = ref.named_children
        if len(kids) == 2 and kids[1].type == "identifier" and src.text(kids[1]) in sites:
            if kids[0].type == "this" or src.text(kids[0]) in classes:
                sites[src.text(kids[1])].append(kids[1])
            else:
                banned.add(src.text(kids[1]))
    return {k: v for k, v in sites.items() if k not in banned}


def _py_function_sites(src: Source, a: Analysis) -> dict[str, list[Node]]:
    strings = b" ".join(src.data[s.start : s.end] for s in src.nodes("string_content"))
    sites: dict[str, list[Node]] = {}
    for fn in src.nodes("function_definition"):
        name = fn.child("name")
        holder = fn.parent.parent if fn.parent is not None and fn.parent.type == "decorated_definition" else fn.parent
        if name is None or (
            holder is not None
            and holder.type == "block"
            and holder.parent is not None
            and holder.parent.type == "class_definition"
        ):
            continue
        sites.setdefault(src.text(name), []).append(name)
    for cls in src.nodes("class_definition"):
        if (cls_name := cls.child("name")) is not None:
            sites.pop(src.text(cls_name), None)
    imported = {
        src.text(n)
        for s in src.nodes("import_statement", "import_from_statement")
        for n in s.walk()
        if n.type == "identifier"
    }
    words = set(re.findall(rb"\w+", strings))  # whole words, as a word-boundary search
    out = {}
    for site, defs in sites.items():
        if site in a.params or site in a.macros or site.encode() in words or site in imported:
            continue
        out[site] = defs + list(a.occurrences.get(site, []))
    return out


def function_names(code: str, language: str) -> list[str]:
    """Renamable function/method names defined in ``code`` (never ``main``, ``@Override`` or
    JDK interface methods, methods of anonymous classes, or Python methods and dunders)."""
    return list(_function_sites(_source(code, language)))


def rename_in_source(src: Source, mapping: dict[str, str]) -> str:
    """Rename by byte ranges in an already parsed source (see :func:`rename_identifiers`)."""
    src.require_clean()
    variables = set(_renamable(src))
    functions = _function_sites(src)
    taken = _all_identifiers(src)
    new_names = list(mapping.values())
    if len(set(new_names)) != len(new_names):
        raise TransformError(f"two identifiers would get the same new name: {mapping}")
    edits = Edits(src.data)
    seen: set[int] = set()
    for old, new in mapping.items():
        if old == new:
            continue
        if old not in variables and old not in functions:
            raise TransformError(f"{old!r} is not a renamable identifier in this {src.language} code")
        if not is_valid_identifier(new, src.language):
            raise TransformError(f"new name {new!r} is not a valid, non-reserved {src.language} identifier")
        if new in taken:
            raise TransformError(f"new name {new!r} collides with an identifier already in the code")
        nodes = functions[old] if old in functions else get_analysis(src).occurrences[old]
        for node in nodes:
            if node.start not in seen:
                seen.add(node.start)
                edits.replace_node(node, new)
    return edits.apply()


def rename_identifiers(code: str, language: str, mapping: dict[str, str]) -> str:
    """Rename every in-scope occurrence of each ``old`` name in ``mapping`` to ``new``.

    Keys must come from :func:`renamable_identifiers` or :func:`function_names`. Raises
    :class:`TransformError` (a ``ValueError``) if the code does not parse, a key is not
    renamable, or a new name is invalid, a keyword/reserved name, duplicated, or collides
    with any identifier, macro or type already in the code.
    """
    return rename_in_source(Source(code, language), mapping)
