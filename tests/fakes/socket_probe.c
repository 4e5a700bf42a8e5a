/* A probe of the socket families a session may create (sandbox/confine.h):
 * socket() and socketpair() for every family up to AF_MAX, and socket() for
 * each netlink protocol. Prints one line per call, `socket.FAMILY=`,
 * `socketpair.FAMILY=` or `netlink.PROTOCOL=`, then `ok` or the errno's name,
 * and closes what it made. It never connects, binds or sends anything: a
 * vsock, packet or bluetooth socket that opens is closed at once. */
#define _GNU_SOURCE
#include <errno.h>
#include <linux/netlink.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

static const char *err_name(int e)
{
        const char *n = strerrorname_np(e);
        return n ? n : "E?";
}

/* The socket type a family answers most plainly (each family refuses
 * types it does not know with its own errno). */
static int type_for(int family)
{
        switch (family) {
        case AF_PACKET:
        case AF_CAN:
        case AF_XDP:
        case AF_KEY:
                return SOCK_RAW;
        case AF_ALG:
                return SOCK_SEQPACKET;
        case AF_VSOCK:
        case AF_BLUETOOTH:
        case AF_UNIX:
        case AF_INET:
        case AF_INET6:
                return SOCK_STREAM;
        default:
                return SOCK_DGRAM;
        }
}

int main(void)
{
        for (int f = 0; f < AF_MAX; f++) {
                int type = f == AF_NETLINK ? SOCK_RAW : type_for(f);
                int fd = socket(f, type | SOCK_CLOEXEC, 0);
                if (fd >= 0) {
                        printf("socket.%d=ok\n", f);
                        close(fd);
                } else {
                        printf("socket.%d=%s\n", f, err_name(errno));
                }
                int sv[2];
                if (socketpair(f, type | SOCK_CLOEXEC, 0, sv) == 0) {
                        printf("socketpair.%d=ok\n", f);
                        close(sv[0]);
                        close(sv[1]);
                } else {
                        printf("socketpair.%d=%s\n", f, err_name(errno));
                }
        }
        for (int p = 0; p < MAX_LINKS; p++) {
                int fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, p);
                if (fd >= 0) {
                        printf("netlink.%d=ok\n", p);
                        close(fd);
                } else {
                        printf("netlink.%d=%s\n", p, err_name(errno));
                }
        }
        return 0;
}
