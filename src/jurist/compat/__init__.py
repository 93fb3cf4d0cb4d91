"""Drop-in surfaces of other libraries, as thin layers over jurist's own judges."""

__all__: list[str] = []  # the surfaces are the submodules: jurist.compat.uqlm
