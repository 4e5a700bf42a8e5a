#include "base/phase.h"
#include "cmd/cli.h"

int main(int argc, char **argv)
{
        TB_PHASE("main");
        int r = cli_main(argc, argv);
        TB_PHASE("exit");
        return r;
}
