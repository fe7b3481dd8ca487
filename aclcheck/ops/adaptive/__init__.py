"""What the adaptive-pooling backward operators share, so that each operator's folder
keeps only what differs: window bounds and the tables that map windows onto input
positions (windows), gradOutputs on exact rounding ties (ties), their space of calls
(space), the record fields (record), case ids (ids), the seeded draws and the
invalid-call family (draws), where a hardware-edge case goes and the products' core
counts (slot), input values (values), a case's memory (footprint), and the
Operator record assembled from a folder (assembly)."""
