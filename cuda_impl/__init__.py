"""cuda_impl."""
