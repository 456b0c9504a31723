"""AIPP as ATC defines it: the aipp.cfg config (made from a preprocessing, or parsed), applied with numpy, inserted as
the stand-in's first stage, and read from the attributes an om carries."""
