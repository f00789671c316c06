#ifndef COURIER_CCURLSHIM_H
#define COURIER_CCURLSHIM_H

#include <curl/curl.h>

// Swift cannot call C variadic functions, so each argument type of
// curl_easy_setopt / curl_easy_getinfo / curl_multi_setopt gets a typed wrapper.

CURLcode courier_easy_setopt_long(CURL *handle, CURLoption option, long value);
CURLcode courier_easy_setopt_off_t(CURL *handle, CURLoption option, curl_off_t value);
CURLcode courier_easy_setopt_string(CURL *handle, CURLoption option, const char *value);
CURLcode courier_easy_setopt_pointer(CURL *handle, CURLoption option, void *value);
CURLcode courier_easy_setopt_slist(CURL *handle, CURLoption option, struct curl_slist *value);
CURLcode courier_easy_setopt_write_callback(CURL *handle, curl_write_callback callback);
CURLcode courier_easy_setopt_read_callback(CURL *handle, curl_read_callback callback);
CURLcode courier_easy_setopt_header_callback(CURL *handle, curl_write_callback callback);
CURLcode courier_easy_setopt_xferinfo_callback(CURL *handle, curl_xferinfo_callback callback);
CURLcode courier_easy_setopt_seek_callback(CURL *handle, curl_seek_callback callback);

CURLcode courier_easy_getinfo_long(CURL *handle, CURLINFO info, long *value);
CURLcode courier_easy_getinfo_off_t(CURL *handle, CURLINFO info, curl_off_t *value);
CURLcode courier_easy_getinfo_string(CURL *handle, CURLINFO info, char **value);
CURLcode courier_easy_getinfo_pointer(CURL *handle, CURLINFO info, void **value);

CURLMcode courier_multi_setopt_long(CURLM *handle, CURLMoption option, long value);

// One transport's load, for the connection-pool and queue-depth metrics: the sockets its
// connections hold open (counted by CURLOPT_OPENSOCKETFUNCTION / CURLOPT_CLOSESOCKETFUNCTION,
// so a pooled idle connection counts until curl closes it) and its transfers waiting for a
// connection. Written on the transport's thread, read from any thread (C11 atomics).
typedef struct courier_transport_load courier_transport_load;
courier_transport_load *courier_transport_load_create(void);
void courier_transport_load_destroy(courier_transport_load *load);
long courier_transport_load_sockets(const courier_transport_load *load);
long courier_transport_load_queued(const courier_transport_load *load);
void courier_transport_load_add_queued(courier_transport_load *load, long delta);
// Makes `handle` open and close its sockets through `load`'s counter (sockets are opened
// with SOCK_CLOEXEC, so a child process never inherits a connection).
CURLcode courier_easy_count_sockets(CURL *handle, courier_transport_load *load);
// CURLOPT_PREREQFUNCTION (libcurl 7.80): called once a connection is ready, before sending.
typedef int (*courier_prereq_callback)(void *clientp, char *primary_ip, char *local_ip, int primary_port,
                                       int local_port);
CURLcode courier_easy_setopt_prereq_callback(CURL *handle, courier_prereq_callback callback);

#endif
