"""Variants that find_deviations queries and reports on small held-out C and Java programs
compile and print exactly what the original printed (oracles: gcc, javac/java; the helpers
are the transformation equivalence tests')."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from mlflow_metacompress.attacks.deviation import find_deviations
from tests.support.programs import run_java_classes

C_PROGRAM = """#include <stdio.h>

int weigh(int *xs, int n) {
    int total = 0;
    for (int i = 0; i < n; i++) {
        if (xs[i] % 3 == 0) {
            total += 2 * xs[i];
        } else {
            total -= xs[i];
        }
    }
    return total;
}

int main(void) {
    int data[6] = {3, 7, 9, 10, 12, 5};
    int k = 0;
    while (k < 6) {
        printf("%d %d\\n", k, weigh(data, k + 1));
        k++;
    }
    return 0;
}
"""

JAVA_PROGRAM = """public class Held {
    static int weigh(int[] xs) {
        int total = 0;
        for (int i = 0; i < xs.length; i++) {
            if (xs[i] % 3 == 0) {
                total += 2 * xs[i];
            } else {
                total -= xs[i];
            }
        }
        return total;
    }

    public static void main(String[] args) {
        int[] data = {3, 7, 9, 10, 12, 5};
        int k = 1;
        while (k <= data.length) {
            System.out.println(k + " " + weigh(java.util.Arrays.copyOf(data, k)));
            k += 1;
        }
    }
}
"""


def ntok(code: str) -> int:
    return len(re.findall(r"\w+|[^\w\s]", code))


def search_variants(program: str, language: str) -> list[str]:
    """Deviations found by DFLARE on a pair that splits on length, plus a sample of the
    variants it queried on the way."""
    seen: list[str] = []
    base = ntok(program)

    def teacher(df):
        seen.extend(df["code"])
        return np.tile([0.2, 0.8], (len(df), 1))

    def student(df):
        p = np.array([0.8 if ntok(c) < base + 40 else 0.3 for c in df["code"]])
        return np.stack([1 - p, p], axis=1)

    frame = pd.DataFrame({"code": [program]})
    found = []
    for seed in range(2):
        out = find_deviations(teacher, student, frame, ["code"], language, queries=40, seed=seed)
        found += [r.variant_code for r in out if r.found]
    assert found, "the search found no deviation to check"
    queried = sorted(set(seen) - {program})
    return list(dict.fromkeys(found + queried[:: max(len(queried) // 8, 1)]))


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("gcc") is None, reason="gcc not installed")
def test_c_variants_compile_and_behave_like_the_original(tmp_path: Path) -> None:
    def build_and_run(code: str, tag: str) -> str:
        src, exe = tmp_path / f"{tag}.c", tmp_path / tag
        src.write_text(code)
        comp = subprocess.run(
            ["gcc", "-std=gnu11", "-O0", "-w", "-o", str(exe), str(src)], capture_output=True, text=True, timeout=60
        )
        assert comp.returncode == 0, f"{tag} does not compile:\n{comp.stderr}\n{code}"
        return subprocess.run([str(exe)], capture_output=True, text=True, timeout=30, check=True).stdout

    expected = build_and_run(C_PROGRAM, "original")
    assert expected.count("\n") == 6
    variants = search_variants(C_PROGRAM, "c")
    assert len(variants) >= 4
    for n, code in enumerate(variants):
        assert build_and_run(code, f"v{n}") == expected, f"variant {n} changed behaviour:\n{code}"


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("javac") is None or shutil.which("java") is None, reason="JDK not installed")
def test_java_variants_compile_and_behave_like_the_original(tmp_path: Path) -> None:
    variants = [JAVA_PROGRAM, *search_variants(JAVA_PROGRAM, "java")]
    assert len(variants) >= 5
    sources, classes = [], []
    for n, code in enumerate(variants):
        path = tmp_path / f"v{n}" / "Held.java"
        path.parent.mkdir()
        path.write_text(f"package v{n};\n{code}")
        sources.append(str(path))
        classes.append(f"v{n}.Held")
    outputs = run_java_classes(tmp_path, sources, classes)
    assert outputs["v0.Held"].count("\n") == 6
    for n, cls in enumerate(classes):
        assert outputs[cls] == outputs["v0.Held"], f"variant {n} changed behaviour:\n{variants[n]}"
