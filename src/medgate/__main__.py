from medgate.cli import main

main()
