"""The XLSX writer's IO: the streamed sheet and package, the zip stream, the size cap."""
