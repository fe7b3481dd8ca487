"""What the adaptive-pooling backward operators share: window bounds and the tables that
map windows onto input positions (windows), gradOutputs on exact rounding ties (ties),
and their space of calls (space)."""
