"""Search machinery shared by the distillation methods (never one method's own):

- :mod:`.compressor_search`: Compressor's genetic search over RoBERTa shapes (Shi et al., ASE 2022), on pymoo's GA;
- :mod:`.objective`: the ``latency`` (default) and ``paper`` objectives, structural
  constraints, the latency budget and the fallback of an empty size band;
- :mod:`.space`: AVATAR's configuration space and its z3 pruning (Shi et al., ICSE-SEIS 2024);
- :mod:`.moo`: multi-objective search with pymoo (NSGA-II, AGE-MOEA) and surrogates;
- :mod:`.probes`: briefly distilled probes, the surrogates' training data;
- :mod:`.avatar_search`: AVATAR's whole search (pruning, probes, surrogate, NSGA-II, choice);
- :mod:`.build`: tokenizer and student of a searched :class:`~..arch.ArchSpec`;
- :mod:`.teacher_shaped`: the scaled-down teacher-shaped family of the ``fidelity`` method.
"""
