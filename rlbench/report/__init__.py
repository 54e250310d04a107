"""Showing the answers: figures (functions that draw on an axes), one style, the report document, terminal tables,
reproduce."""
