from propdata_client.cli import main

raise SystemExit(main())
