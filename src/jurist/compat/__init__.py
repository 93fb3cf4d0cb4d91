"""Drop-in surfaces of other libraries, as thin layers over jurist's own judges."""
