from infer.cli.app import main

main()
