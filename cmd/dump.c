/* ingero dump: not written yet. */
#include "builtin.h"

int cmd_dump(int argc, const char **argv)
{
	die("'dump' is not written yet");
}
