"""ATC's command line and its run: the chips it compiles for, its dynamic shapes checked as it checks them, the argv
built for a pb, and the run judged by what ATC printed."""
