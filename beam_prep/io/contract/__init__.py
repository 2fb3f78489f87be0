"""The artifact directory contract: its layout, the one validation of ``manifest.json``, and
the checked reader of every artifact file (sizes and sha256 checked while read).
"""
