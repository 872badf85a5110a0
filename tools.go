//go:build tools

package tools

import (
	_ "github.com/a-h/templ"
	_ "github.com/chromedp/chromedp"
	_ "github.com/go-chi/chi/v5"
	_ "github.com/gorilla/websocket"
	_ "github.com/prometheus/client_golang/prometheus"
	_ "github.com/prometheus/client_golang/prometheus/promhttp"
	_ "github.com/yuin/goldmark"
	_ "go.uber.org/goleak"
	_ "gopkg.in/yaml.v3"
	_ "modernc.org/sqlite"
)

