"""Team work on a shared store: who did what, reviews bound to the evidence they saw, portable bundles."""
