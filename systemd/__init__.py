"""The shipped systemd units and udev rules: this folder, installed as the package
`showdown_systemd`.

pyproject.toml maps the package onto this folder and ships its units, timers and rules as
package data; `showdown install` (deploy/sources.py) reads them with importlib.resources. No
code lives here: this file only makes the folder a regular package, as config/__init__.py does.
"""
