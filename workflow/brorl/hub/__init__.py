"""Everything between a run and the Hugging Face hub: pinned revisions and the pin gate (pins, pin_gate), the lock
`make pin` writes (pin_lock, pin_resolve), what a pinned model commit holds (checkpoint_identity), and the one retry
layer of every download (retry)."""
