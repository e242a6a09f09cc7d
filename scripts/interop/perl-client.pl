#!/usr/bin/perl
# A Secret Service client in Perl on Net::DBus (Debian's libnet-dbus-perl, over libdbus), which
# talks D-Bus itself: a plain session, the default collection by its alias, secrets sent as
# "text/plain". Used by ClientInteropTests.
#
#   perl-client.pl store LABEL NAME VALUE...   (the secret on stdin)
#   perl-client.pl lookup NAME VALUE...        (prints the secret and its content type)
use strict;
use warnings;
use Net::DBus;
use Net::DBus qw(:typing);

my $service_name = 'org.freedesktop.secrets';
sub fail { print STDERR "perl-client: @_\n"; exit 1; }

my $command = shift @ARGV // fail('usage: perl-client.pl store LABEL NAME VALUE... | lookup NAME VALUE...');
my $bus = Net::DBus->session;
my $service = $bus->get_service($service_name);
my $secrets = $service->get_object('/org/freedesktop/secrets', 'org.freedesktop.Secret.Service');
my (undef, $session) = $secrets->OpenSession('plain', dbus_variant(dbus_string('')));
my $collection = $service->get_object('/org/freedesktop/secrets/aliases/default', 'org.freedesktop.Secret.Collection');

if ($command eq 'store') {
    my $label = shift @ARGV // fail('no label');
    @ARGV % 2 == 0 or fail('attributes come in name value pairs');
    my %attributes = @ARGV;
    local $/;
    my $value = <STDIN> // '';
    my $properties = {
        'org.freedesktop.Secret.Item.Label' => dbus_string($label),
        'org.freedesktop.Secret.Item.Attributes' => dbus_dict(\%attributes),
    };
    # Typed by secretd's introspection data: (oayays).
    my $secret = [$session, [], [unpack('C*', $value)], 'text/plain'];
    my ($item, $prompt) = $collection->CreateItem($properties, $secret, dbus_boolean(1));
    $prompt eq '/' or fail('CreateItem asked for a prompt (the keyring is locked)');
} elsif ($command eq 'lookup') {
    @ARGV % 2 == 0 or fail('attributes come in name value pairs');
    my %attributes = @ARGV;
    my $items = $collection->SearchItems(\%attributes);
    @$items or fail('no item');
    my $item = $service->get_object($items->[0], 'org.freedesktop.Secret.Item');
    my $found = $item->GetSecret(dbus_object_path($session));
    my ($path, $parameters, $value, $type) = @$found;
    print pack('C*', @$value), "\n", $type, "\n";
} else {
    fail("unknown command '$command'");
}
