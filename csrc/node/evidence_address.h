/*
** evidence_address.h: a HOST:PORT of the node's command line, checked before use.
**
** --address is what dqlite binds and what it tells the other members to dial, so
** it must be an IPv4 address (libdqlite 1.11 starts on no name and no IPv6
** address) that names one machine, with a port of 1..65535. A --join seed is
** only dialled by this program, so its host may also be a name or [IPv6]; a host
** of other characters (a space, a slash) is refused, not left to fail at lookup.
*/
#ifndef EVIDENCE_ADDRESS_H
#define EVIDENCE_ADDRESS_H

#include <stddef.h>

/* Splits z at its last colon into host (an IPv6 address keeps its brackets) and a
** port of 1..65535: 0, or -1 if z is no HOST:PORT or the host is nHost bytes or
** longer. The one reading of a HOST:PORT, for the command line's and the
** addresses a cluster's leader reports. */
int evidenceAddressSplit(const char *z, char *host, size_t nHost, unsigned *pPort);

/* Returns 0 if z is a usable address (bBind: one for --address), else -1 with
** what is wrong in zErr (at most nErr bytes). */
int evidenceAddressCheck(const char *z, int bBind, char *zErr, size_t nErr);

/* Whether this machine can listen on z (checked by --address): 0, or -1 with the
** reason (the port taken, the address not this machine's) in zErr. */
int evidenceAddressBindable(const char *z, char *zErr, size_t nErr);

#endif /* EVIDENCE_ADDRESS_H */
