"""The model server: flags for the installed SGLang, preflight rules, lifecycle, verification, proxy.

Submodules are imported explicitly by their users (``evalpipe.server.lifecycle`` …) so that importing
this package stays cheap; nothing here imports SGLang.
"""
