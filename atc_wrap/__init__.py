"""The converter side: building and running ATC (pb -> om) and the ONNX stand-in (tf2onnx), and reading what Ascend
writes (om files, NPU dumps and their layouts) without CANN. Never imports typer."""
