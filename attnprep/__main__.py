from attnprep.cli import main

main()
