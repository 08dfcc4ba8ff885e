"""Procedural training data and evaluation for the AuK Studio demo model.

Modules, lowest first (imports point down the list only):
    sounds        harmonic voices, noise beds and sines at 24 kHz (numpy)
    instructions  AuK instruction templates and paraphrases
    measures      RMS, F0, cents, spectral SNR, output validity (numpy + librosa)
    data          training triples, ProceduralDataset, held-out clips and the seed split
    evaluation    the demo bars and evaluate_family over any edit callable

Importing the package imports none of them, so it stays free of librosa until needed.
"""

__all__ = ["data", "evaluation", "instructions", "measures", "sounds"]
