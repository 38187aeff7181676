"""ptx_impl."""
