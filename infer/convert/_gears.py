"""convert's dynamic options, gathered for ATC's checks (`atc_wrap.atc.dynamic_shapes`): the gears or shape range the
converted model takes, recorded in model.json (``converted.gears``) for dump-bin, run and compare."""

from __future__ import annotations

from atc_wrap.atc.dynamic_shapes import GearRequest, parse_shape_range
from infer.convert.options import ConvertOptions


def gear_request(options: ConvertOptions) -> GearRequest:
    """The dynamic options given, parsed (a shape range's syntax refused here, naming --shape-range)."""
    ranges = parse_shape_range(options.shape_range, "--shape-range") if options.shape_range.strip() else ()
    return GearRequest(dynamic_batch=options.dynamic_batch, dynamic_image_size=options.dynamic_image_size,
                       dynamic_dims=options.dynamic_dims, shape_range=ranges)


def gear_settings(options: ConvertOptions) -> dict[str, object]:
    """What model.json's settings keep of the dynamic options, as given."""
    return {"dynamic_batch": list(options.dynamic_batch),
            "dynamic_image_size": [list(g) for g in options.dynamic_image_size],
            "dynamic_dims": [list(g) for g in options.dynamic_dims], "shape_range": options.shape_range}
