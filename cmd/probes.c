/* ingero probes: not written yet. */
#include "builtin.h"

int cmd_probes(int argc, const char **argv)
{
	die("'probes' is not written yet");
}
