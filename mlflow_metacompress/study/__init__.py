"""The MetaCompress study on real data (``mlflow run . -e reproduce``), apart from the main job.

Awal, Rochan, Roy (arXiv 2511.05476, JSS 2026) report students within 3 points of their
teacher's accuracy that still break MR1–MR3, and students that lose up to 285% more accuracy
than their teacher under identifier attacks. This package repeats that protocol at CPU scale
and judges it by rules fixed before the runs:

- :mod:`.config` (the study's arguments), :mod:`.data` (its rows), :mod:`.stages` (teacher,
  students, evaluations as resumable MLflow runs, :mod:`.resume`), :mod:`.attacks` (the
  attack stages), :mod:`.oracle` (the teacher against a real CodeBERT's labels),
  :mod:`.premise` (the premise ladder), :mod:`.cli` (``recipes/reproduce.py``);
- the verdicts: :mod:`.verdicts` and :mod:`.seeds` (the statistical rules), :mod:`.rows`
  (paired per-row counts), :mod:`.judge` (the rules applied), :mod:`.table` and
  :mod:`.markdown` (the stored JSON and its page), :mod:`.rerender` (a page re-judged from
  its JSON alone).

The main job (``mlflow run .``) is :mod:`mlflow_metacompress.pipeline`; this package builds on
it, never the reverse.
"""
