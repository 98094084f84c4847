/*
** evidence_address.c: checks a HOST:PORT before the node uses it (evidence_address.h).
**
** Without these checks a port of 99999 was taken modulo 65536 and a port of "abc"
** as 0 (any free port), and the node announced an address it did not listen on;
** a name or a taken port made dqlite fail with an empty message.
*/
#include "evidence_address.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

/* The bytes of a host name (RFC 1123, and '_', which some resolvers and container
** networks give) or of an IPv4 address. */
#define HOST_CHARS "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-_"

int evidenceAddressSplit(const char *z, char *host, size_t nHost, unsigned *pPort) {
  const char *colon = strrchr(z, ':');
  size_t hostLen, digits;
  unsigned long port = 0;
  if (colon == 0) return -1;
  hostLen = (size_t)(colon - z);
  digits = strlen(colon + 1);
  if (hostLen == 0 || hostLen >= nHost || digits == 0 || digits > 5) return -1;
  for (const char *p = colon + 1; *p; p++) {
    if (*p < '0' || *p > '9') return -1;
    port = port * 10 + (unsigned long)(*p - '0');
  }
  if (port == 0 || port > 65535) return -1;
  memcpy(host, z, hostLen);
  host[hostLen] = 0;
  *pPort = (unsigned)port;
  return 0;
}

int evidenceAddressCheck(const char *z, int bBind, char *zErr, size_t nErr) {
  char host[256];
  unsigned port;
  struct in_addr ip4;
  struct in6_addr ip6;
  size_t n;
  if (evidenceAddressSplit(z, host, sizeof(host), &port) != 0) {
    snprintf(zErr, nErr, "must be HOST:PORT with a port of 1..65535, got %s", z);
    return -1;
  }
  n = strlen(host);
  if (bBind) {
    if (inet_pton(AF_INET, host, &ip4) != 1) {
      snprintf(zErr, nErr,
               "must be an IPv4 address of this machine and a port (such as 127.0.0.1:9001), got %s", z);
      return -1;
    }
    if (ip4.s_addr == htonl(INADDR_ANY)) {
      snprintf(zErr, nErr, "must be the address the other nodes reach this one at; %s names no one machine",
               host);
      return -1;
    }
    return 0;
  }
  if (host[0] == '[') {
    if (n < 3 || host[n - 1] != ']') goto bad;
    host[n - 1] = 0;
    if (inet_pton(AF_INET6, host + 1, &ip6) != 1) goto bad;
  } else if (strchr(host, ':') != 0) {
    goto bad; /* an IPv6 address goes in brackets, or its port cannot be told apart */
  } else if (host[strspn(host, HOST_CHARS)] != 0) {
    /* a space, a slash, a byte beyond ASCII: no name lookup could find it */
    snprintf(zErr, nErr,
             "must be HOST:PORT, a host of letters, digits, '.', '-' and '_' (or an IPv4 address, or an "
             "IPv6 one in brackets), got %s",
             z);
    return -1;
  }
  return 0;
bad:
  snprintf(zErr, nErr, "must be HOST:PORT (an IPv6 address in brackets: [::1]:9001), got %s", z);
  return -1;
}

int evidenceAddressBindable(const char *z, char *zErr, size_t nErr) {
  char host[256];
  unsigned port;
  struct sockaddr_in sa;
  int fd, one = 1, rc;
  if (evidenceAddressSplit(z, host, sizeof(host), &port) != 0) {
    snprintf(zErr, nErr, "%s is not HOST:PORT", z);
    return -1;
  }
  memset(&sa, 0, sizeof(sa));
  sa.sin_family = AF_INET;
  sa.sin_port = htons((unsigned short)port);
  if (inet_pton(AF_INET, host, &sa.sin_addr) != 1) {
    snprintf(zErr, nErr, "%s is not an IPv4 address", host);
    return -1;
  }
  if ((fd = socket(AF_INET, SOCK_STREAM, 0)) < 0) {
    snprintf(zErr, nErr, "cannot open a socket to check %s: %s", z, strerror(errno));
    return -1;
  }
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)); /* as a listener does */
  rc = bind(fd, (struct sockaddr *)&sa, sizeof(sa));
  if (rc != 0) {
    const char *why = errno == EADDRINUSE      ? "another program listens on that port"
                      : errno == EADDRNOTAVAIL ? "that address is not one of this machine's"
                      : errno == EACCES        ? "a port below 1024 needs privileges"
                                               : "";
    snprintf(zErr, nErr, "cannot listen on %s: %s%s%s", z, strerror(errno), *why ? " (" : "", why);
    if (*why) snprintf(zErr + strlen(zErr), nErr - strlen(zErr), ")");
  }
  close(fd);
  return rc == 0 ? 0 : -1;
}
