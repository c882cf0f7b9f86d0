"""Paytables: the lines as data, their validation, and their exact par sheets."""
