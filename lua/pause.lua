-- EMQ.PAUSE's twin (after shared.lua). ARGV = lane
return set_paused('pause', true)
