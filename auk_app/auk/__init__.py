"""AuK: instruction-driven speech and audio editing (DiT, VAE, sampler, pipeline)."""
