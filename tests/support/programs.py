"""Programs run for real: code snippets per language, a Java runner that compiles and runs
classes, and a copy of the MLproject with its environment."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from tests.support import REPO

SNIPPETS = {
    "c": [
        "int f(int n) {\n    int s = 0, i;\n    for (i = 0; i < n; i++) { s += i * 2; }\n"
        "    while (s > 100) s -= 7;\n    if (s > 3) return s; else return -s;\n}\n",
        "static int g(struct node *node, char *p) {\n    if (node->x < 4 && p != NULL) { node->x++; }\n"
        "    return node->x;\n}\n",
    ],
    "java": [
        "int f(int n) {\n    int s = 0;\n    for (int i = 0; i < n; i++) { s += i * 2; }\n"
        "    while (s > 100) s -= 7;\n    if (s > 3) return s; else return -s;\n}\n"
    ],
    "python": [
        'def f(n):\n    """Doc."""\n    s = 0\n    for i in range(n):\n        s += i * 2\n'
        "    while s > 100:\n        s -= 7\n    if s > 3:\n        return s\n    else:\n        return -s\n"
    ],
}


def copy_project(dest: Path) -> Path:
    dest.mkdir(parents=True, exist_ok=True)
    for name in ("MLproject", "conda.yaml"):
        shutil.copy(REPO / name, dest / name)
    shutil.copytree(REPO / "recipes", dest / "recipes", ignore=shutil.ignore_patterns("__pycache__"))
    return dest


def project_env(tmp: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MLFLOW_")}
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"  # `python` = this venv
    env.update(METACOMPRESS_CACHE_DIR=str(tmp / "cache"), HF_HUB_OFFLINE="1", TOKENIZERS_PARALLELISM="false")
    return env


JAVA_RUNNER = """
import java.io.*;
public class Runner {
    public static void main(String[] args) throws Exception {
        PrintStream real = System.out;
        for (String cls : args) {
            ByteArrayOutputStream buf = new ByteArrayOutputStream();
            System.setOut(new PrintStream(buf, true));
            Class.forName(cls).getMethod("main", String[].class).invoke(null, (Object) new String[0]);
            System.out.flush();
            System.setOut(real);
            real.print("=====" + cls + "\\n" + buf.toString());
        }
    }
}
"""


def run_java_classes(tmp_path: Path, sources: list[str], classes: list[str]) -> dict[str, str]:
    """Compile ``sources`` with the ``Runner`` (:data:`JAVA_RUNNER`) and run every class in
    ``classes``: ``{class: its printed output}`` (every class must print)."""
    (tmp_path / "Runner.java").write_text(JAVA_RUNNER)
    comp = subprocess.run(
        ["javac", "-nowarn", "-d", str(tmp_path / "out"), str(tmp_path / "Runner.java"), *sources],
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert comp.returncode == 0, comp.stderr[-4000:]
    res = subprocess.run(
        ["java", "-cp", str(tmp_path / "out"), "Runner", *classes],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    outputs = {}
    for chunk in res.stdout.split("=====")[1:]:
        cls, _, body = chunk.partition("\n")
        outputs[cls] = body
    assert set(outputs) == set(classes)
    return outputs
