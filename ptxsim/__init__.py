"""ptxsim."""
