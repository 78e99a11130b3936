/*
 * issm_toggle: open /dev/infiniband/issm0, hold it, close it.
 *
 * Not part of the build or of CI.  Under ibsim (ibsim-run) opening issm sets
 * PortInfo.CapabilityMask.IsSM on the client's port and closing clears it;
 * each change makes ibsim send a Trap 144 to the master SM, which capture.sh
 * records from ibsim's Verbose 3 dump.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	int secs = argc > 1 ? atoi(argv[1]) : 2;
	int fd = open("/dev/infiniband/issm0", O_RDWR);

	if (fd < 0) {
		perror("open issm0");
		return 1;
	}
	printf("issm open fd %d\n", fd);
	fflush(stdout);
	sleep(secs);
	close(fd);
	printf("issm closed\n");
	return 0;
}
