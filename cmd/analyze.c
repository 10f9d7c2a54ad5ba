/* ingero analyze: not written yet. */
#include "builtin.h"

int cmd_analyze(int argc, const char **argv)
{
	die("'analyze' is not written yet");
}
