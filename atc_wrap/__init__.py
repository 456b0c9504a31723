"""The converter side: building and running ATC (pb -> om) and the ONNX stand-in (tf2onnx). Never imports typer."""
