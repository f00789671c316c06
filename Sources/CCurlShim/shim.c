#include "CCurlShim.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

CURLcode courier_easy_setopt_long(CURL *handle, CURLoption option, long value) {
    return curl_easy_setopt(handle, option, value);
}
CURLcode courier_easy_setopt_off_t(CURL *handle, CURLoption option, curl_off_t value) {
    return curl_easy_setopt(handle, option, value);
}
CURLcode courier_easy_setopt_string(CURL *handle, CURLoption option, const char *value) {
    return curl_easy_setopt(handle, option, value);
}
CURLcode courier_easy_setopt_pointer(CURL *handle, CURLoption option, void *value) {
    return curl_easy_setopt(handle, option, value);
}
CURLcode courier_easy_setopt_slist(CURL *handle, CURLoption option, struct curl_slist *value) {
    return curl_easy_setopt(handle, option, value);
}
CURLcode courier_easy_setopt_write_callback(CURL *handle, curl_write_callback callback) {
    return curl_easy_setopt(handle, CURLOPT_WRITEFUNCTION, callback);
}
CURLcode courier_easy_setopt_read_callback(CURL *handle, curl_read_callback callback) {
    return curl_easy_setopt(handle, CURLOPT_READFUNCTION, callback);
}
CURLcode courier_easy_setopt_header_callback(CURL *handle, curl_write_callback callback) {
    return curl_easy_setopt(handle, CURLOPT_HEADERFUNCTION, callback);
}
CURLcode courier_easy_setopt_xferinfo_callback(CURL *handle, curl_xferinfo_callback callback) {
    return curl_easy_setopt(handle, CURLOPT_XFERINFOFUNCTION, callback);
}
CURLcode courier_easy_setopt_seek_callback(CURL *handle, curl_seek_callback callback) {
    return curl_easy_setopt(handle, CURLOPT_SEEKFUNCTION, callback);
}

CURLcode courier_easy_getinfo_long(CURL *handle, CURLINFO info, long *value) {
    return curl_easy_getinfo(handle, info, value);
}
CURLcode courier_easy_getinfo_off_t(CURL *handle, CURLINFO info, curl_off_t *value) {
    return curl_easy_getinfo(handle, info, value);
}
CURLcode courier_easy_getinfo_string(CURL *handle, CURLINFO info, char **value) {
    return curl_easy_getinfo(handle, info, value);
}
CURLcode courier_easy_getinfo_pointer(CURL *handle, CURLINFO info, void **value) {
    return curl_easy_getinfo(handle, info, value);
}

CURLMcode courier_multi_setopt_long(CURLM *handle, CURLMoption option, long value) {
    return curl_multi_setopt(handle, option, value);
}

struct courier_transport_load {
    atomic_long sockets;
    atomic_long queued;
};

courier_transport_load *courier_transport_load_create(void) {
    courier_transport_load *load = malloc(sizeof *load);
    if (load == NULL) return NULL;
    atomic_init(&load->sockets, 0);
    atomic_init(&load->queued, 0);
    return load;
}
void courier_transport_load_destroy(courier_transport_load *load) { free(load); }
long courier_transport_load_sockets(const courier_transport_load *load) {
    return atomic_load_explicit(&load->sockets, memory_order_relaxed);
}
long courier_transport_load_queued(const courier_transport_load *load) {
    return atomic_load_explicit(&load->queued, memory_order_relaxed);
}
void courier_transport_load_add_queued(courier_transport_load *load, long delta) {
    atomic_fetch_add_explicit(&load->queued, delta, memory_order_relaxed);
}

static curl_socket_t courier_open_socket(void *clientp, curlsocktype purpose, struct curl_sockaddr *address) {
    (void)purpose;
    curl_socket_t fd = socket(address->family, address->socktype | SOCK_CLOEXEC, address->protocol);
    if (fd != CURL_SOCKET_BAD) atomic_fetch_add_explicit(&((courier_transport_load *)clientp)->sockets, 1, memory_order_relaxed);
    return fd;
}
static int courier_close_socket(void *clientp, curl_socket_t item) {
    atomic_fetch_sub_explicit(&((courier_transport_load *)clientp)->sockets, 1, memory_order_relaxed);
    return close(item);
}
CURLcode courier_easy_count_sockets(CURL *handle, courier_transport_load *load) {
    CURLcode code = curl_easy_setopt(handle, CURLOPT_OPENSOCKETFUNCTION, courier_open_socket);
    if (code == CURLE_OK) code = curl_easy_setopt(handle, CURLOPT_OPENSOCKETDATA, load);
    if (code == CURLE_OK) code = curl_easy_setopt(handle, CURLOPT_CLOSESOCKETFUNCTION, courier_close_socket);
    if (code == CURLE_OK) code = curl_easy_setopt(handle, CURLOPT_CLOSESOCKETDATA, load);
    return code;
}
CURLcode courier_easy_setopt_prereq_callback(CURL *handle, courier_prereq_callback callback) {
    return curl_easy_setopt(handle, CURLOPT_PREREQFUNCTION, callback);
}
