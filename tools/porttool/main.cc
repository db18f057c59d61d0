// porttool entry point: everything lives in the subcommand files (see commands.h).
#include "tools/porttool/commands.h"

int main(int argc, char** argv) { return porttool::cli::Main(argc, argv); }
