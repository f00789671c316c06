// Does a libcurl share handle (CURL_LOCK_DATA_SSL_SESSION) make more TLS sessions resume than
// the easy handles' own caches? The evidence behind Docs/Performance.md, "HTTPS and HTTP/2".
//
//   gcc Benchmarks/tls-session-share.c -o /tmp/tls-session-share -lcurl
//   /tmp/tls-session-share SHARE C N URL CA_PEM    # SHARE 0|1, C handles kept busy, N requests
//
// Point URL at an HTTPS nginx with `keepalive_timeout 0` (a new connection per request) and an
// access log with `$ssl_session_reused`; count the `r` (resumed) and `.` (full handshake) lines.
// The handles are set up as Courier's (HTTP/2 over TLS offered, PIPEWAIT, multiplexing multi).
#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>

static size_t sink(char *data, size_t size, size_t count, void *user) {
    (void)data;
    (void)user;
    return size * count;
}

int main(int argc, char **argv) {
    if (argc != 6) {
        fprintf(stderr, "usage: %s SHARE C N URL CA_PEM\n", argv[0]);
        return 2;
    }
    int share = atoi(argv[1]), handles = atoi(argv[2]), total = atoi(argv[3]);
    curl_global_init(CURL_GLOBAL_ALL);
    CURLSH *sessions = NULL;
    if (share) {
        sessions = curl_share_init();
        curl_share_setopt(sessions, CURLSHOPT_SHARE, CURL_LOCK_DATA_SSL_SESSION);
    }
    CURLM *multi = curl_multi_init();
    curl_multi_setopt(multi, CURLMOPT_PIPELINING, CURLPIPE_MULTIPLEX);
    int started = 0, done = 0, failed = 0;
    for (int i = 0; i < handles && started < total; i++, started++) {
        CURL *easy = curl_easy_init();
        if (sessions) curl_easy_setopt(easy, CURLOPT_SHARE, sessions);
        curl_easy_setopt(easy, CURLOPT_URL, argv[4]);
        curl_easy_setopt(easy, CURLOPT_CAINFO, argv[5]);
        curl_easy_setopt(easy, CURLOPT_WRITEFUNCTION, sink);
        curl_easy_setopt(easy, CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_2TLS);
        curl_easy_setopt(easy, CURLOPT_PIPEWAIT, 1L);
        curl_multi_add_handle(multi, easy);
    }
    while (done < total) {
        int running;
        curl_multi_perform(multi, &running);
        CURLMsg *message;
        int queued;
        while ((message = curl_multi_info_read(multi, &queued))) {
            CURL *easy = message->easy_handle;
            if (message->data.result != CURLE_OK) failed++;
            curl_multi_remove_handle(multi, easy);
            done++;
            if (started < total) {
                curl_multi_add_handle(multi, easy);
                started++;
            }
        }
        curl_multi_poll(multi, NULL, 0, 100, NULL);
    }
    printf("%d requests, %d failed\n", done, failed);
    return failed != 0;
}
