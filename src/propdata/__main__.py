from propdata.cli import main

main()
