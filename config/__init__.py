"""The shipped default settings: this folder, installed as the package `showdown_config`.

pyproject.toml maps the package onto this folder and ships every file in it as package data;
runtime/settings_files.py finds them with importlib.resources. No code lives here: this file
only makes the folder a regular package, which importlib.resources reads the same way in a
wheel, an editable install and a checkout.
"""
