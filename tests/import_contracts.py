"""An import-linter contract of our own (pyproject's ``contract_types``): the modules of a
package may import, of the packages checked, only the modules an allowlist names.

import-linter's own contracts forbid or protect whole modules; "deploy/ imports of ours only the
services' config modules" needs the converse, an allowlist. A direct import is checked (what the
source's own files say); what an allowed module imports in turn is that module's business.
"""

from __future__ import annotations

from grimp import ImportGraph
from importlinter.application import output
from importlinter.domain import fields
from importlinter.domain.contract import Contract, ContractCheck


def _within(module: str, packages: set[str]) -> bool:
    """Whether `module` is one of `packages` or inside one of them."""
    return any(module == p or module.startswith(p + ".") for p in packages)


class AllowlistContract(Contract):
    """The source modules import, of `checked_packages`, only `allowed_modules` (and their
    submodules)."""

    type_name = "allowlist"

    source_modules = fields.ListField(subfield=fields.StringField())
    allowed_modules = fields.ListField(subfield=fields.StringField())
    checked_packages = fields.ListField(subfield=fields.StringField())

    def check(self, graph: ImportGraph, verbose: bool) -> ContractCheck:  # noqa: ARG002
        """Every direct import from a source module into a checked package not allowed."""
        sources = {str(m) for m in self.source_modules}  # type: ignore[attr-defined]
        allowed = {str(m) for m in self.allowed_modules}  # type: ignore[attr-defined]
        checked = {str(m) for m in self.checked_packages}  # type: ignore[attr-defined]
        wrong: list[tuple[str, str, int]] = []
        for importer in sorted(graph.modules):
            if not _within(importer, sources):
                continue
            for imported in sorted(graph.find_modules_directly_imported_by(importer)):
                if _within(imported, checked) and not _within(imported, allowed):
                    details = graph.get_import_details(importer=importer, imported=imported)
                    line = details[0]["line_number"] if details else 0
                    wrong.append((importer, imported, line))
        return ContractCheck(kept=not wrong, metadata={"wrong": wrong})

    def render_broken_contract(self, check: ContractCheck) -> None:
        """One line for each import outside the allowlist."""
        for importer, imported, line in check.metadata["wrong"]:
            output.print_error(f"{importer} -> {imported} (l.{line}) is not allowed", bold=False)
            output.new_line()
