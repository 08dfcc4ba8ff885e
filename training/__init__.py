"""Procedural training data and evaluation for the AuK Studio demo model.

Modules, lowest first (imports point down the list only):
    sounds        harmonic voices, noise beds and sines at 24 kHz (numpy)
    speech        English sentences spoken by espeak-ng at 24 kHz
    instructions  AuK instruction templates and paraphrases
    measures      RMS, F0, cents, spectral SNR, output validity (numpy + librosa)
    data          training triples, ProceduralDataset, held-out clips and the seed split
    evaluation    the demo bars and evaluate_family over any edit callable
    codec         the demo's harmonic-plus-noise codec settings and latent statistics
    checkpoint_writer  writes checkpoints in the released layouts
    train_dit     trains and exports AuK-Tiny

Importing the package imports none of them, so it stays free of librosa until needed.
"""

__all__ = ["checkpoint_writer", "codec", "data", "evaluation", "instructions", "measures", "sounds", "speech", "train_dit"]
