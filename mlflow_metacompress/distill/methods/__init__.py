"""Distillation methods, one module each, found by :func:`..discovery.list_methods`.

Each module declares ``NAME``, a frozen ``Options`` dataclass (subclassing
:class:`..options.MethodOptions`) and ``run(ctx, options) -> StudentOutcome``. Methods
share code through :mod:`..search` and the training core (:mod:`..losses`,
:mod:`..modules`, :mod:`..augment`, ...), never through each other. To add a method,
save a new module here; nothing else needs editing.
"""
