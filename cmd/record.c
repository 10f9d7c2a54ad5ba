/* ingero record: not written yet. */
#include "builtin.h"

int cmd_record(int argc, const char **argv)
{
	die("'record' is not written yet");
}
