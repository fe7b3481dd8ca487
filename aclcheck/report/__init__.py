"""Renderers of one verdict list: rich console (and its HTML recording), JSON, JUnit XML."""
