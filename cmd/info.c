/* ingero info: not written yet. */
#include "builtin.h"

int cmd_info(int argc, const char **argv)
{
	die("'info' is not written yet");
}
