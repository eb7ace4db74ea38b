"""Plain helpers shared by the test modules (issue 45), one module per concern, so that no
test module imports another; fixtures built on them live in ``conftest.py``.

- :mod:`.models`: tiny models and toy data;
- :mod:`.distill`: the distillation tests' search space, context and method modules;
- :mod:`.attacks`: attack inputs and oracles;
- :mod:`.evaluation`: predictors and evaluator runs;
- :mod:`.registry`: sqlite stores, versions and evaluation runs for the gates;
- :mod:`.pages`: independent readers of a report page, headless Chromium;
- :mod:`.programs`: snippets, a Java runner, the MLproject's copy;
- :mod:`.study`: the study's generated data, tiny configuration and empty store.
"""

from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
