"""What `infer convert` refuses: `ConvertError` (atc_wrap's, which ATC's own failures raise too)."""

from __future__ import annotations

from atc_wrap.errors import ConvertError

__all__ = ["ConvertError"]
