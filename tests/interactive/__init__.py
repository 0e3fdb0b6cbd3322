"""Tests that drive real interactive sessions: a Jupyter kernel, an IPython shell, notebooks."""
