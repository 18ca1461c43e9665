"""Pure halves of the XLSX writer: cell typing, sheet XML, data warnings."""
