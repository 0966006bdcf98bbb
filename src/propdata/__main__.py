from propdata.cli import main

if __name__ == "__main__":  # not when a child process (ingest.synthetic) imports it
    main()
